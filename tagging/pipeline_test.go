package tagging

import (
	"errors"
	"strings"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func defaultPipeline(t *testing.T) *Pipeline {
	t.Helper()
	vs, err := NewValidators(nil, defaultGroups(t).Schema())
	require.NoError(t, err)
	return NewPipeline(defaultRegistry(t), vs, nil)
}

func TestPipelineNormalizeManual(t *testing.T) {
	p := defaultPipeline(t)
	got, err := p.NormalizeManual([]string{"B:x", " a:Y", "b : X"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a:y", "b:x"}, got)

	got, err = p.NormalizeManual(nil)
	require.NoError(t, err)
	assert.NotNil(t, got)
	assert.Empty(t, got)

	// Computed keys are not stripped here; that is Prepare's job.
	got, err = p.NormalizeManual([]string{"Turns:MultiTurn"})
	require.NoError(t, err)
	assert.Equal(t, []string{"turns:multiturn"}, got)
}

func TestPipelineFormatErrorListsEveryBadEntry(t *testing.T) {
	p := defaultPipeline(t)
	it := newItem("support", "", U("q"), A("a"))
	it.ManualTags = []string{"keep:me"}
	_, err := p.Prepare(it, []string{"source:sme", "nocolon", "topic:x", ":x", "  "}, true)
	var fe *gtc.TagFormatError
	require.True(t, errors.As(err, &fe), "got %v", err)
	assert.Equal(t, []gtc.TagProblem{
		{Index: 1, Message: "Invalid tag format (expected group:value): 'nocolon'"},
		{Index: 3, Message: "Invalid tag format (empty group or value): ':x'"},
		{Index: 4, Message: "Invalid tag format (expected group:value): '  '"},
	}, fe.Problems)
	assert.Equal(t, []string{"keep:me"}, it.ManualTags, "a format error leaves the item untouched")
	assert.Empty(t, it.ComputedTags)
}

func TestPipelinePrepare(t *testing.T) {
	logger, buf := captureLogger()
	vs, err := NewValidators(nil, defaultGroups(t).Schema())
	require.NoError(t, err)
	p := NewPipeline(defaultRegistry(t), vs, logger)

	it := newItem("support", refsData("https://kb.example.com/help/1"), U("q"), A("a"), U("again"))
	prep, err := p.Prepare(it, []string{
		"Turns:MultiTurn", "dataset:other", "DATASET: Support ", " Source : SME ", "topic:install",
		"topic:install", "custom:x", "Answer : No_Answer", "retrieval_behavior:rich",
	}, true)
	require.NoError(t, err)

	wantComputed := []string{"dataset:support", "question_length:short", "reference_type:helpcenter", "retrieval_behavior:single", "turns:multiturn"}
	assert.Equal(t, []string{"custom:x", "source:sme", "topic:install"}, prep.ManualTags)
	assert.Equal(t, wantComputed, prep.ComputedTags)
	assert.Equal(t, []string{"answer:no_answer", "dataset:other", "dataset:support", "retrieval_behavior:rich", "turns:multiturn"}, prep.Stripped)
	assert.Equal(t, prep.ManualTags, it.ManualTags)
	assert.Equal(t, wantComputed, it.ComputedTags)

	recs := logRecords(t, buf)
	require.Len(t, recs, 1)
	assert.Equal(t, "WARN", recs[0]["level"])
	assert.Equal(t, "item-1", recs[0]["item_id"])
	assert.Equal(t, []any{"answer:no_answer", "dataset:other", "dataset:support", "retrieval_behavior:rich", "turns:multiturn"}, recs[0]["stripped"])
}

func TestPipelinePrepareWithoutManualTags(t *testing.T) {
	logger, buf := captureLogger()
	p := NewPipeline(defaultRegistry(t), nil, logger)
	it := newItem("support", "")
	it.ManualTags = nil
	it.ComputedTags = nil
	prep, err := p.Prepare(it, nil, true)
	require.NoError(t, err)
	assert.NotNil(t, it.ManualTags)
	assert.Empty(t, it.ManualTags)
	assert.Equal(t, []string{"dataset:support", "question_length:short", "retrieval_behavior:no_refs", "turns:singleturn"}, it.ComputedTags)
	assert.NotNil(t, prep.ManualTags)
	assert.NotNil(t, prep.Stripped)
	assert.Empty(t, prep.Stripped)
	assert.Empty(t, buf.String(), "nothing stripped, nothing logged")
}

func TestPipelineTagRuleError(t *testing.T) {
	p := defaultPipeline(t)
	it := newItem("support", "", U("q"), A("a"))
	prep, err := p.Prepare(it, []string{"source:synthetic", "source:sme", "topic:a", "topic:b"}, true)
	var re *gtc.TagRuleError
	require.True(t, errors.As(err, &re), "got %v", err)
	assert.Equal(t, []string{"Group 'source' is exclusive; only one value allowed, got: ['sme', 'synthetic']"}, re.Messages)
	assert.Equal(t, []string{"source:sme", "source:synthetic", "topic:a", "topic:b"}, prep.ManualTags,
		"the prepared tags are still reported, for callers that only warn")

	prep, err = p.Prepare(it, []string{"source:synthetic", "source:sme"}, false)
	require.NoError(t, err, "validate=false skips the rules")
	assert.Equal(t, []string{"source:sme", "source:synthetic"}, prep.ManualTags)
	assert.Equal(t, []string{"source:sme", "source:synthetic"}, it.ManualTags)
}

func TestPipelineValidatorsSeeComputedTags(t *testing.T) {
	schema := NewSchema(GroupSpec{Name: "turns", Values: []string{"custom"}, Exclusive: true})
	vs, err := NewValidators([]string{"exclusive_group"}, schema)
	require.NoError(t, err)
	p := NewPipeline(defaultRegistry(t), vs, nil)
	_, err = p.Prepare(newItem("support", "", U("q")), []string{"turns:custom"}, true)
	var re *gtc.TagRuleError
	require.True(t, errors.As(err, &re), "got %v", err)
	assert.Equal(t, []string{"Group 'turns' is exclusive; only one value allowed, got: ['custom', 'singleturn']"}, re.Messages)
}

// readsManual is a dynamic plugin that reports the item's manual tags, to show that they are
// normalized and stripped before plugins run.
type readsManual struct{}

func (readsManual) Key() string         { return "echo:_dynamic" }
func (readsManual) Description() string { return "echo" }
func (readsManual) Compute(in *Input) (string, bool) {
	if len(in.Item.ManualTags) == 0 {
		return "", false
	}
	return "echo:" + strings.Join(in.Item.ManualTags, ","), true
}

func TestPipelinePluginsSeePreparedManualTags(t *testing.T) {
	reg, err := NewRegistry(readsManual{})
	require.NoError(t, err)
	p := NewPipeline(reg, nil, nil)
	prep, err := p.Prepare(newItem("support", ""), []string{"Topic:B", "echo:old", "topic:a", "topic : b"}, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"echo:topic:a,topic:b"}, prep.ComputedTags)
	assert.Equal(t, []string{"topic:a", "topic:b"}, prep.ManualTags)
	assert.Equal(t, []string{"echo:old"}, prep.Stripped, "a custom registry's dynamic prefix is reserved too")
}

func TestPipelineNilItem(t *testing.T) {
	_, err := defaultPipeline(t).Prepare(nil, nil, true)
	assert.Error(t, err)
}

func TestPipelineAccessors(t *testing.T) {
	reg := defaultRegistry(t)
	vs, err := NewValidators([]string{"dependency"}, Schema{})
	require.NoError(t, err)
	p := NewPipeline(reg, vs, nil)
	assert.Same(t, reg, p.Registry())
	require.Len(t, p.Validators(), 1)
	assert.Equal(t, "dependency", p.Validators()[0].Name())
}

func TestPipelineProductRules(t *testing.T) {
	p := defaultPipeline(t)
	long := "custom:" + strings.Repeat("x", 94)
	_, err := p.Prepare(newItem("support", ""), []string{"source:sme", "topic:a,topic:b", long, "a:\x00"}, true)
	var fe *gtc.TagFormatError
	require.True(t, errors.As(err, &fe), "got %v", err)
	assert.Equal(t, []gtc.TagProblem{
		{Index: 1, Message: "Invalid tag format (commas and control characters are not allowed): 'topic:a,topic:b'"},
		{Index: 2, Message: "Invalid tag format (longer than 100 characters): '" + long + "'"},
		{Index: 3, Message: "Invalid tag format (commas and control characters are not allowed): 'a:\x00'"},
	}, fe.Problems)
}

func TestPipelinePreparedSlicesAreNotShared(t *testing.T) {
	p := defaultPipeline(t)
	raw := []string{"topic:b", "Topic:A"}
	it := newItem("support", refsData("https://a.example/help"), U("q"))
	prep, err := p.Prepare(it, raw, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"topic:b", "Topic:A"}, raw, "the caller's list is not reordered")
	prep.ManualTags[0] = "changed"
	prep.ComputedTags[0] = "changed"
	assert.Equal(t, []string{"topic:a", "topic:b"}, it.ManualTags)
	assert.Equal(t, "dataset:support", it.ComputedTags[0])
}
