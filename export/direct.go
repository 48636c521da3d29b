package export

import (
	"bytes"

	"github.com/gtc-dev/gtc"
)

// buildDirect builds the fast-path record of an item: its API JSON, the top-level nulls
// dropped, every value in the record encoding (keys sorted at every level).
func buildDirect(it *gtc.Item, c *canon) (*rawRecord, error) {
	var b bytes.Buffer
	it.AppendAPIJSON(&b)
	return c.record(b.Bytes())
}
