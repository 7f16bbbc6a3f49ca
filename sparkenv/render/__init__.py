"""Presentation of reports: text lines, JSON, JUnit XML. Nothing here decides anything."""
