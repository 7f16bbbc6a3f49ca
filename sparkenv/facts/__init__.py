"""Typed facts each stage gathers, which the rules (sparkenv/rules/) judge: pure data, no probing."""
