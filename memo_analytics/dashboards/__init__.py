"""The Panel dashboard served by ``memo serve`` (SPEC §3.4)."""
