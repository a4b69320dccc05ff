"""The mitmproxy side of blackbox: the addon, the proxy runner and the environment (CA, proxy variables, Node preload) for wrapped commands."""
