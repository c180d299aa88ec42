"""Profiles shipped with envguard (installed as package data; see envguard/profile/locate.py)."""
