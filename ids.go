package gtc

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"strings"

	"github.com/google/uuid"
)

// BucketCount is K of the bucket rule (see DeriveBucket): a constant of the storage format,
// not a setting. Changing it moves where existing items are expected, so it can only change
// together with a migration.
const BucketCount = 5

// bucketNamespace is the UUID namespace of derived buckets.
var bucketNamespace = uuid.MustParse("6edbeb1e-b0a9-4f2c-9671-e01729dbbce3")

// DeriveBucket returns the bucket of an item created without one: the UUID v5 of
// "<datasetName>#<fnv1a32(id) mod K>" in the bucket namespace.
func DeriveBucket(datasetName, id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	idx := h.Sum32() % BucketCount
	return uuid.NewSHA1(bucketNamespace, fmt.Appendf(nil, "%s#%d", datasetName, idx)).String()
}

// ParseUUID accepts 32 hex digits with or without the four hyphens of the 8-4-4-4-12 layout,
// in any case, and returns the lower-case hyphenated form.
func ParseUUID(s string) (string, bool) {
	var hexs string
	switch len(s) {
	case 32:
		hexs = s
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return "", false
		}
		hexs = s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	default:
		return "", false
	}
	b, err := hex.DecodeString(hexs)
	if err != nil || len(b) != 16 {
		return "", false
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], true
}

// IsCanonicalUUID reports whether s is a lower-case hyphenated UUID.
func IsCanonicalUUID(s string) bool {
	c, ok := ParseUUID(s)
	return ok && c == s
}

// IDGenerator draws two-word ids such as "sleek-voxel".
type IDGenerator struct {
	rnd io.Reader
}

// NewIDGenerator returns a generator drawing from rnd (crypto/rand.Reader in production).
func NewIDGenerator(rnd io.Reader) *IDGenerator { return &IDGenerator{rnd: rnd} }

func (g *IDGenerator) intn(n int) int {
	var b [4]byte
	if _, err := io.ReadFull(g.rnd, b[:]); err != nil {
		panic(fmt.Sprintf("gtc: random source failed: %v", err))
	}
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	return int(uint64(v) * uint64(n) >> 32)
}

func (g *IDGenerator) word() string {
	return idAdjectives[g.intn(len(idAdjectives))] + "-" + idNouns[g.intn(len(idNouns))]
}

// New returns a fresh id for which taken reports false. After 5 draws that all collide,
// "-" and 4 random hex digits are appended.
func (g *IDGenerator) New(taken func(id string) bool) string {
	var id string
	for range 5 {
		id = g.word()
		if !taken(id) {
			return id
		}
	}
	for {
		var b [2]byte
		if _, err := io.ReadFull(g.rnd, b[:]); err != nil {
			panic(fmt.Sprintf("gtc: random source failed: %v", err))
		}
		cand := id + "-" + hex.EncodeToString(b[:])
		if !taken(cand) {
			return cand
		}
	}
}

// NewETag returns a fresh store token: a quoted string of 32 lower-case hex digits.
func NewETag(rnd io.Reader) string {
	var b [16]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		panic(fmt.Sprintf("gtc: random source failed: %v", err))
	}
	return `"` + hex.EncodeToString(b[:]) + `"`
}

// SameETag compares two tokens after dropping a leading W/ and one pair of surrounding
// double quotes from each.
func SameETag(a, b string) bool { return normalizeETag(a) == normalizeETag(b) }

func normalizeETag(s string) string {
	s = strings.TrimPrefix(s, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return s
}

// ETagHeader is the ETag response header for a body token: the token itself when it is
// already quoted, else the token in quotes.
func ETagHeader(tok string) string {
	if len(tok) >= 2 && tok[0] == '"' && tok[len(tok)-1] == '"' {
		return tok
	}
	return `"` + tok + `"`
}

var idAdjectives = strings.Fields(`
able agile amber ample apt arctic ardent azure balmy bold brave breezy bright brisk
bronze calm candid cheery chief civic clean clear clever cobalt cosmic coral cozy crisp
curly dapper daring deft dewy eager early easy elated epic even exact fair fancy fast
fellow fervent fiery firm fleet fluent fond frank free fresh frosty gentle giant glad
gleaming glossy golden grand great green hardy hasty hazel hearty honest humble icy
ideal indigo jolly jovial keen kind lavish lean level light lively loyal lucid lucky
lunar mellow merry mighty mild minty misty modest noble nimble olive open optimal
polite prime proud quick quiet rapid rare ready regal rich robust rosy royal ruby
rustic safe sage scenic sharp shiny silent silver simple sleek smart snappy snowy solar
solid sonic spry stable stark steady stellar stoic sturdy sunny super swift tidy timely
tranquil trusty upbeat urban valiant vast velvet vivid warm wary wild wise witty zesty
`)

var idNouns = strings.Fields(`
acorn alpaca anchor apple arrow aspen atlas badger banjo beacon beaver birch bison
breeze brook cactus canyon cedar comet condor coral cosmos cougar crane crater creek
dahlia delta dingo dolphin dune eagle ember falcon fern finch fjord flint fox galaxy
garnet gecko glacier gopher granite harbor hawk heron hollow horizon ibis iris island
jackal jaguar jasper kestrel kiwi koala lagoon lantern lark laurel lemur lichen lily
lotus lynx magnet maple marble meadow meteor mint moose moth nebula nectar newt oak
ocean onyx orbit orchid osprey otter owl panda panther pebble pelican pepper pine
planet plover pony prairie puffin quail quartz quasar rabbit raven reef ridge river
robin rocket saffron salmon sequoia shore sparrow spruce squid star summit swan thistle
tiger topaz trout tulip tundra turtle valley vapor violet voxel walrus willow wombat
wren yak zebra zephyr
`)
