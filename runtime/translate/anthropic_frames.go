package translate

// Event writers of every stream that answers an Anthropic client. Every
// event is written with its event: line: Anthropic SDKs discard events
// without one.

func (c *streamCore) beginEvent(name string) {
	c.out = append(c.out, "event: "...)
	c.out = append(c.out, name...)
	c.out = append(c.out, "\ndata: "...)
}

func (c *streamCore) endEvent() { c.out = append(c.out, "\n\n"...) }

// beginBlockEvent starts event name (content_block_start, _delta or
// _stop) of block index, up to its index; the caller writes the rest of
// the object and ends the event.
func (c *streamCore) beginBlockEvent(name string, index int) {
	c.beginEvent(name)
	c.out = append(c.out, `{"type":"`...)
	c.out = append(c.out, name...)
	c.out = append(c.out, `","index":`...)
	c.out = appendInt(c.out, index)
}
