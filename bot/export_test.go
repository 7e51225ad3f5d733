package bot

// CommandSpecs exposes the registered commands to the golden-file test.
var CommandSpecs = commandSpecs
