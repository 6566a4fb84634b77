"""Code generated from protos/ by `portico gen`. DO NOT EDIT."""

import os

DESCRIPTOR_SET = os.path.join(os.path.dirname(__file__), "portico.binpb")
