"""The planted-memory protocol (on / off / ablation, Memory Utility Index)."""
