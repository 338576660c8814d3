"""The person's browser as a connection: the sites it may be driven on."""
