"""Paper reproductions: each runs a paper's protocol and compares with its figures and tables."""
