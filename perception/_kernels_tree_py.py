"""Tree-channel kernel twins."""
