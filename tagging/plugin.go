package tagging

import gtc "github.com/gtc-dev/gtc"

// DynamicSuffix ends the key of a dynamic plugin: "<group>:_dynamic".
const DynamicSuffix = ":_dynamic"

// Plugin derives at most one computed tag from an item.
//
// Implementations must be deterministic and pure (no clock, randomness, I/O or global
// state), must not modify the item, and must not panic on any valid item.
type Plugin interface {
	// Key is the registration key. A static plugin returns the exact, normalized tag it
	// emits; a dynamic plugin returns "<group>:_dynamic" and emits tags starting with
	// "<group>:".
	Key() string
	// Description is a short human text shown in the tag glossary for static keys.
	Description() string
	// Compute returns (tag, true) when the tag applies and ("", false) otherwise. A static
	// plugin returns Key() itself; a dynamic plugin returns "<group>:" + a non-empty value.
	Compute(in *Input) (string, bool)
}

// Input is what plugins read. The registry builds it once per item and shares it between
// plugins, so question, answer and references are derived once and the same way everywhere.
type Input struct {
	// Item is read-only; plugins must not modify it.
	Item *gtc.Item
	// Question is gtc.QuestionText(Item).
	Question string
	// Answer is gtc.AnswerText(Item).
	Answer string
	// ReferenceURLs are the trimmed reference URLs of gtc.References, in order; never nil.
	ReferenceURLs []string
	// ReferenceCount is gtc.ReferenceCount(Item).
	ReferenceCount int

	// words is the number of words of Question once wordsCounted; the registry runs the
	// plugins of an input one at a time.
	words        int
	wordsCounted bool
}

// NewInput builds the plugin input for it.
func NewInput(it *gtc.Item) *Input {
	urls := gtc.ReferenceURLs(it)
	if urls == nil {
		urls = []string{}
	}
	return &Input{
		Item:           it,
		Question:       gtc.QuestionText(it),
		Answer:         gtc.AnswerText(it),
		ReferenceURLs:  urls,
		ReferenceCount: len(urls),
	}
}
