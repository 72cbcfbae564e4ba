"""Paths the tests share: the repository's root and the tiny training config most end-to-end tests run."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = os.path.join(ROOT, "tests", "train", "tiny_config.py")  # ViT width 32, depth 1, synthetic 16x16x3
