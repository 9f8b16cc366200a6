"""What a protocol runs, in the shape a source format produces it: one module per protocol, below both.

A source format (runner/sources/) reads a published benchmark into these types and a protocol (runner/protocols/)
runs them; neither imports the other's modules for them. Nothing here knows a format or a protocol's steps.
"""
