"""The OpenAPI 3.1 document from the descriptors (`document`): paths and parameters (`paths`),
message schemas (`schemas`), field rules as JSON Schema (`rules`) and the protos' comments."""
