"""The environment a cell runs in: engine, images, the frozen bundle, the sandbox, the model network."""
