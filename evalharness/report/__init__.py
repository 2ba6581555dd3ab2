"""Reading and writing run outputs. Never imports the runtime, so reports work on any laptop."""
