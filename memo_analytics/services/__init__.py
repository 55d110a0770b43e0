"""What the product does: one service function per action, shared by every interface."""
