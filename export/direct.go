package export

import (
	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// buildDirect builds the fast-path record of an item from the codec's API form of it: the
// top-level nulls dropped, every value in the record encoding (keys sorted at every level).
func buildDirect(it *gtc.Item, c *canon) (*rawRecord, error) {
	c.api = codec.AppendItemAPI(c.api[:0], it)
	return c.record(c.api)
}
