package export

import (
	"bytes"
	"fmt"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// This file keeps the reference construction of a fast-path record, which the tests hold
// buildDirect to: the item's API JSON, split into top-level members, null members dropped,
// every value canonicalized.

// buildRaw is the reference fast-path record: the item's API JSON split into top-level members,
// null members dropped, every value canonicalized.
func buildRaw(it *gtc.Item, scratch *bytes.Buffer, c *canon) (*rawRecord, error) {
	scratch.Reset()
	scratch.Write(codec.AppendItemAPI(scratch.AvailableBuffer(), it))
	src := scratch.Bytes()
	c.reset(src)
	rec := &rawRecord{members: make([]rawMember, 0, 32), arena: make([]byte, 0, len(src)+len(src)/8)}
	c.ws()
	if !c.eat('{') {
		return nil, fmt.Errorf("export: item %s: not an object", it.ID)
	}
	c.ws()
	if c.eat('}') {
		return rec, nil
	}
	type span struct {
		key        []byte
		start, end int
	}
	var spans [40]span
	list := spans[:0]
	for {
		c.ws()
		key, err := c.key()
		if err != nil {
			return nil, err
		}
		c.ws()
		if !c.eat(':') {
			return nil, c.fail("expected ':'")
		}
		c.ws()
		isNull := bytes.HasPrefix(c.src[c.i:], []byte("null"))
		start := len(rec.arena)
		if rec.arena, err = c.value(rec.arena, 0); err != nil {
			return nil, err
		}
		if !isNull {
			list = append(list, span{key, start, len(rec.arena)})
		} else {
			rec.arena = rec.arena[:start]
		}
		c.ws()
		if c.eat(',') {
			continue
		}
		if c.eat('}') {
			break
		}
		return nil, c.fail("expected ',' or '}'")
	}
	for _, s := range list {
		rec.members = append(rec.members, rawMember{topKey(s.key), rec.arena[s.start:s.end:s.end]})
	}
	return rec, nil
}
