package blob

import (
	"testing"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// TestArtifactConformance runs the shared artifact suite (storetest.RunArtifacts)
// against the configured server, each behaviour on its own fresh container.
func TestArtifactConformance(t *testing.T) {
	testenv.BlobConnectionString(t)
	storetest.RunArtifacts(t, storetest.ArtifactHarness{
		New:         func(t *testing.T) gtc.ArtifactStore { return newStore(t) },
		Raw:         rawNames,
		ManyObjects: 1050,
	})
}
