"""Code generated from protos/ by `portico gen`. DO NOT EDIT."""

import os
import sys

DESCRIPTOR_SET = os.path.join(os.path.dirname(__file__), "portico.binpb")

if os.path.dirname(__file__) not in sys.path:
    sys.path.append(os.path.dirname(__file__))
