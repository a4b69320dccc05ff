"""A run through the proxy, in plain Python: record, replay and fork sessions, the recorder."""
