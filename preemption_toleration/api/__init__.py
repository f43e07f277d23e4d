"""pydantic models of the objects we accept and produce, and the CRD built from them."""
