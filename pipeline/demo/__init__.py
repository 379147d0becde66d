"""The demo: a vault and a local feed site to try signaldesk on."""
