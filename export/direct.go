package export

import (
	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// buildDirect builds the fast-path record of an item straight from its fields, in the
// codec's record form: the API form with keys sorted at every level and the top-level nulls
// left out. Only the raw JSON values (metadata, plugin data, tool arguments and responses,
// context and feedback values, the trace payload) are read, by the canonicalizer. A test
// holds it to the decoded record's encoding, byte for byte.
func buildDirect(it *gtc.Item, c *canon) (*rawRecord, error) {
	c.spans = c.spans[:0]
	arena, err := codec.AppendItemRecord(make([]byte, 0, 4096), it, c.canonical, c.member)
	if err != nil {
		return nil, err
	}
	rec := &rawRecord{members: make([]rawMember, len(c.spans), 32), arena: arena}
	for i, s := range c.spans {
		rec.members[i] = rawMember{s.key, arena[s.start:s.end:s.end]}
	}
	return rec, nil
}

// span is a top-level member of a record being built: its key and where its value is.
type span struct {
	key        string
	start, end int
}

func (c *canon) member(key string, start, end int) { c.spans = append(c.spans, span{key, start, end}) }
