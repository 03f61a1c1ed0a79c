"""Informativeness by the maximum-entropy method (MEM)."""
