"""The operator (SPEC §6): digest, proposals, delegated actions, audit."""
