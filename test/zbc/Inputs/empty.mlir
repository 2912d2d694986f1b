// A well-formed file with nothing for zbc to check.
module {}
