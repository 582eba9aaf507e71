"""The script layer's stages: load an agent's fresh state, run the pure function, save the result atomically."""
