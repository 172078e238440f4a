"""The service's CDK constructs.

Named ``components`` rather than the conventional ``constructs``: a local package called
``constructs`` would shadow the ``constructs`` library that every CDK module imports.
"""
