"""Model components shared by several families (each importable and testable on its own)."""
