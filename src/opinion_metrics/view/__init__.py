"""What people look at, shared by the CLI and the Spaces: the systems-by-metrics tables
(`text`), the significance report (`significance`) and the figures (`figures`). Imports
`analysis`, `families`, `stats`.
"""
