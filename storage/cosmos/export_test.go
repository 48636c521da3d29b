package cosmos

import (
	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// ItemDocument is the document a current gtc writes for it: its canonical document with the
// derived index fields. Tests plant it behind the store's back, as another tool would.
func ItemDocument(it *gtc.Item) []byte {
	return itemDocument(codec.ItemStoredJSON(it), gtc.Derive(it), "0123456789abcdef")
}
