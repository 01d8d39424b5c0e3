package parsers

import "bytes"

// Position turns a byte offset in data into the 1-based line and byte column of an
// EntryError; an offset out of range is clamped to data.
func Position(data []byte, offset int) (line, column int) {
	offset = min(max(offset, 0), len(data))
	before := data[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	return line, offset - bytes.LastIndexByte(before, '\n')
}
