package tagging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errStoreDown = errors.New("store unreachable")

type vocabFixture struct {
	v     *Vocabulary
	tags  *fakeTagStore
	defs  *fakeDefinitionStore
	clock *gtc.FakeClock
}

// newVocab builds a vocabulary over the built-in groups, the allowlist custom:escalation and
// a tag store holding stored.
func newVocab(t *testing.T, stored ...string) vocabFixture {
	t.Helper()
	f := vocabFixture{
		tags:  newFakeTagStore(stored...),
		defs:  newFakeDefinitionStore(),
		clock: gtc.NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 123456789, time.UTC)),
	}
	f.v = NewVocabulary(defaultRegistry(t), []string{"custom:escalation"}, defaultGroups(t), f.tags, f.defs, f.clock, nil)
	return f
}

func TestTagStoreProvider(t *testing.T) {
	logger, buf := captureLogger()
	store := newFakeTagStore("topic:b", " Custom : Escalation ", "nocolon", "custom:escalation", "a,b:c", "", "topic:a",
		"g:"+strings.Repeat("v", 120))
	p := NewTagStoreProvider(store, logger)
	assert.Equal(t, "tag-store", p.Name())

	got, err := p.AllowedTags(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"custom:escalation", "topic:a", "topic:b"}, got)

	recs := logRecords(t, buf)
	require.Len(t, recs, 1, "one warning for every skipped entry of one listing")
	assert.Equal(t, "WARN", recs[0]["level"])
	assert.EqualValues(t, 4, recs[0]["count"])
	assert.Contains(t, recs[0]["problems"], "Invalid tag format (expected group:value): 'nocolon'")
	assert.Contains(t, recs[0]["problems"], "Invalid tag format (commas and control characters are not allowed): 'a,b:c'")

	empty, err := NewTagStoreProvider(newFakeTagStore(), nil).AllowedTags(context.Background())
	require.NoError(t, err)
	assert.NotNil(t, empty)
	assert.Empty(t, empty)

	store.listErr = errStoreDown
	_, err = p.AllowedTags(context.Background())
	assert.ErrorIs(t, err, errStoreDown)
}

func TestVocabularyKnownTags(t *testing.T) {
	f := newVocab(t, "custom:from-store", "Turns:MultiTurn", "dataset:x", "source:sme", "bad")
	got, err := f.v.KnownTags(context.Background())
	require.NoError(t, err)
	assert.IsIncreasing(t, got)
	assert.Len(t, got, 25+2, "the built-in groups, the allowlist and the store, each tag once")
	assert.Contains(t, got, "custom:escalation")
	assert.Contains(t, got, "custom:from-store")
	assert.NotContains(t, got, "turns:multiturn", "computed keys are never known manual tags")
	assert.NotContains(t, got, "dataset:x")

	f.tags.listErr = errStoreDown
	_, err = f.v.KnownTags(context.Background())
	assert.ErrorIs(t, err, errStoreDown)
	assert.Contains(t, err.Error(), "tag-store")
}

func TestVocabularyWithoutGroupsFile(t *testing.T) {
	v := NewVocabulary(defaultRegistry(t), nil, nil, newFakeTagStore("custom:x"), newFakeDefinitionStore(), nil, nil)
	got, err := v.KnownTags(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"custom:x"}, got)
	assert.Equal(t, gtc.TagSchema{Version: "v1", Groups: []gtc.TagGroupSchema{}}, v.Schema())
	g, err := v.Glossary(context.Background())
	require.NoError(t, err)
	require.Len(t, g.Groups, 1)
	assert.Equal(t, "computed", g.Groups[0].Name)
}

func TestVocabularyComputedKeys(t *testing.T) {
	f := newVocab(t)
	assert.Equal(t, []string{
		"answer:no_answer", "question_length:long", "question_length:medium", "question_length:short",
		"reference_type:article", "reference_type:helpcenter", "retrieval_behavior:no_refs", "retrieval_behavior:rich",
		"retrieval_behavior:single", "retrieval_behavior:two_refs", "turns:multiturn", "turns:singleturn",
	}, f.v.ComputedKeys())
}

func TestVocabularyAddTags(t *testing.T) {
	f := newVocab(t)
	ignored, err := f.v.AddTags(context.Background(), []string{" Custom : Escalation ", "turns:multiturn", "Dataset:Other",
		"custom:new", "custom:escalation", "TURNS:MULTITURN"})
	require.NoError(t, err)
	assert.Equal(t, []string{"dataset:other", "turns:multiturn"}, ignored)
	assert.Equal(t, []string{"Add custom:escalation,custom:new"}, f.tags.writes())

	known, err := f.v.KnownTags(context.Background())
	require.NoError(t, err)
	assert.Contains(t, known, "custom:new")
}

func TestVocabularyAddTagsSpecExample(t *testing.T) {
	// Added tags are normalized; computed ones are ignored and returned.
	f := newVocab(t)
	ignored, err := f.v.AddTags(context.Background(), []string{" Custom : Escalation ", "turns:multiturn"})
	require.NoError(t, err)
	assert.Equal(t, []string{"turns:multiturn"}, ignored)
	assert.Equal(t, []string{"Add custom:escalation"}, f.tags.writes())
}

func TestVocabularyAddTagsNothingToStore(t *testing.T) {
	for name, raw := range map[string][]string{"nil": nil, "empty": {}, "only computed": {"turns:multiturn", "dataset:x"}} {
		t.Run(name, func(t *testing.T) {
			f := newVocab(t)
			ignored, err := f.v.AddTags(context.Background(), raw)
			require.NoError(t, err)
			assert.NotNil(t, ignored)
			assert.Empty(t, f.tags.recorded(), "no store call when nothing is left to add")
		})
	}
}

func TestVocabularyAddTagsFormatErrorStoresNothing(t *testing.T) {
	f := newVocab(t)
	_, err := f.v.AddTags(context.Background(), []string{"custom:ok", "nocolon", "turns:multiturn", ":x", "a,b:c", "custom:also-ok"})
	var fe *gtc.TagFormatError
	require.True(t, errors.As(err, &fe), "got %v", err)
	assert.Equal(t, []gtc.TagProblem{
		{Index: 1, Message: "Invalid tag format (expected group:value): 'nocolon'"},
		{Index: 3, Message: "Invalid tag format (empty group or value): ':x'"},
		{Index: 4, Message: "Invalid tag format (commas and control characters are not allowed): 'a,b:c'"},
	}, fe.Problems)
	assert.Empty(t, f.tags.recorded(), "nothing is stored when any entry is malformed")
}

func TestVocabularyAddTagsStoreError(t *testing.T) {
	f := newVocab(t)
	f.tags.addErr = &gtc.Error{Code: gtc.CodeStoreUnavailable, Message: "down"}
	_, err := f.v.AddTags(context.Background(), []string{"custom:x"})
	assert.Equal(t, gtc.CodeStoreUnavailable, gtc.ErrorCode(err), "store errors keep their code: %v", err)
}

func TestVocabularyRemoveTags(t *testing.T) {
	f := newVocab(t, "custom:a", "custom:b", "source:sme")
	require.NoError(t, f.v.RemoveTags(context.Background(), []string{"Custom : A", "custom:absent", "custom:a", "source:sme"}))
	assert.Equal(t, []string{"Remove custom:a,custom:absent,source:sme"}, f.tags.writes())

	known, err := f.v.KnownTags(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, known, "custom:a")
	assert.Contains(t, known, "custom:b")
	assert.Contains(t, known, "source:sme", "a groups-file tag stays known after leaving the store")

	require.NoError(t, f.v.RemoveTags(context.Background(), nil))
	assert.Len(t, f.tags.writes(), 1, "nothing to remove, no store call")
}

func TestVocabularyRemoveTagsFormatErrorRemovesNothing(t *testing.T) {
	f := newVocab(t, "custom:a")
	err := f.v.RemoveTags(context.Background(), []string{"custom:a", "x:", "custom:" + strings.Repeat("z", 100)})
	var fe *gtc.TagFormatError
	require.True(t, errors.As(err, &fe), "got %v", err)
	assert.Equal(t, []gtc.TagProblem{
		{Index: 1, Message: "Invalid tag format (empty group or value): 'x:'"},
		{Index: 2, Message: "Invalid tag format (longer than 100 characters): 'custom:" + strings.Repeat("z", 100) + "'"},
	}, fe.Problems)
	assert.Empty(t, f.tags.writes())

	f.tags.removeErr = errStoreDown
	assert.ErrorIs(t, f.v.RemoveTags(context.Background(), []string{"custom:a"}), errStoreDown)
}

func TestVocabularySchemaBuiltIn(t *testing.T) {
	s := newVocab(t).v.Schema()
	assert.Equal(t, "v1", s.Version)
	names := make([]string, len(s.Groups))
	for i, g := range s.Groups {
		names[i] = g.Name
	}
	assert.Equal(t, []string{"answerability", "difficulty", "expertise", "intent", "source", "topic"}, names)
	assert.Equal(t, gtc.TagGroupSchema{
		Name: "answerability", Values: []string{"answerable", "not_answerable", "should_not_answer"}, Exclusive: true,
		DependsOn: []gtc.TagDependency{},
	}, s.Groups[0])

	// The wire form: four keys, depends_on an empty list.
	raw, err := json.Marshal(s.Groups[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"name": "answerability", "values": ["answerable", "not_answerable", "should_not_answer"], "exclusive": true, "depends_on": []}`, string(raw))
}

func TestVocabularySchemaDependencies(t *testing.T) {
	groups, err := ParseGroups([]byte(`{"manualTagGroups": [
	  {"group": "review", "dependsOn": ["a:z", "a-b:c", "turns:multiturn", "a:x:y", "a:b"], "tags": ["Done", "Open"]},
	  {"group": "Audit", "mutuallyExclusive": true, "tags": ["x"]}
	]}`), "test")
	require.NoError(t, err)
	v := NewVocabulary(defaultRegistry(t), nil, groups, newFakeTagStore(), newFakeDefinitionStore(), nil, nil)
	s := v.Schema()
	require.Len(t, s.Groups, 2)
	assert.Equal(t, gtc.TagGroupSchema{Name: "audit", Values: []string{"x"}, Exclusive: true, DependsOn: []gtc.TagDependency{}}, s.Groups[0])
	assert.Equal(t, gtc.TagGroupSchema{Name: "review", Values: []string{"done", "open"}, DependsOn: []gtc.TagDependency{
		{Group: "a", Value: "b"}, {Group: "a", Value: "x:y"}, {Group: "a", Value: "z"}, {Group: "a-b", Value: "c"},
		{Group: "turns", Value: "multiturn"},
	}}, s.Groups[1], "split at the first colon; sorted by group, then value")

	s.Groups[1].Values[0] = "changed"
	assert.Equal(t, "done", v.Schema().Groups[1].Values[0], "the answer is a copy")
}

func TestVocabularyGlossary(t *testing.T) {
	f := newVocab(t)
	g, err := f.v.Glossary(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "v1", g.Version)
	require.Len(t, g.Groups, 7, "six manual groups and the computed group; no custom group without definitions")

	names := []string{}
	for _, grp := range g.Groups {
		names = append(names, grp.Name)
	}
	assert.Equal(t, []string{"source", "answerability", "topic", "intent", "expertise", "difficulty", "computed"}, names,
		"manual groups in file order")

	source := g.Groups[0]
	assert.Equal(t, "manual", source.Type)
	require.NotNil(t, source.Description)
	assert.Equal(t, "Where the item came from", *source.Description)
	keys := []string{}
	for _, tag := range source.Tags {
		keys = append(keys, tag.Key)
	}
	assert.Equal(t, []string{"source:other", "source:sa", "source:sme", "source:sme_curated", "source:synthetic", "source:user"}, keys)
	require.NotNil(t, source.Tags[0].Description)
	assert.Equal(t, "Any other origin", *source.Tags[0].Description)

	computed := g.Groups[6]
	assert.Equal(t, "computed", computed.Type)
	require.NotNil(t, computed.Description)
	assert.Equal(t, "Derived by the server from each item's content; read-only", *computed.Description)
	require.Len(t, computed.Tags, 12)
	assert.Equal(t, "answer:no_answer", computed.Tags[0].Key)
	require.NotNil(t, computed.Tags[0].Description)
	assert.Equal(t, "The final agent answer is the no_answer marker.", *computed.Tags[0].Description)
	assert.Equal(t, "turns:singleturn", computed.Tags[11].Key)
	assert.Equal(t, "The conversation has at most two turns.", *computed.Tags[11].Description)
	for _, tag := range computed.Tags {
		assert.NotContains(t, tag.Key, "dataset")
	}
}

func TestVocabularyGlossaryNullDescriptions(t *testing.T) {
	groups, err := ParseGroups([]byte(`{"manualTagGroups": [{"group": "plain", "tags": ["b", {"value": "a", "description": "the a"}]}]}`), "test")
	require.NoError(t, err)
	v := NewVocabulary(defaultRegistry(t), nil, groups, newFakeTagStore(), newFakeDefinitionStore(), nil, nil)
	g, err := v.Glossary(context.Background())
	require.NoError(t, err)
	raw, err := json.Marshal(g.Groups[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"name": "plain", "description": null, "type": "manual",
	  "tags": [{"key": "plain:a", "description": "the a"}, {"key": "plain:b", "description": null}]}`, string(raw))
}

func TestVocabularyGlossaryCustomGroup(t *testing.T) {
	f := newVocab(t)
	ctx := context.Background()
	for _, d := range []struct{ key, desc string }{{"zeta:last", "z"}, {"custom:escalation", "Needs a human hand-off"}, {"Free Text Key", ""}} {
		_, err := f.v.PutDefinition(ctx, d.key, d.desc, "alice@example.com")
		require.NoError(t, err)
	}
	g, err := f.v.Glossary(ctx)
	require.NoError(t, err)
	require.Len(t, g.Groups, 8)
	custom := g.Groups[7]
	raw, err := json.Marshal(custom)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name": "custom", "description": "Tags that curators have described in the glossary", "type": "custom",
	  "tags": [{"key": "Free Text Key", "description": ""}, {"key": "custom:escalation", "description": "Needs a human hand-off"},
	           {"key": "zeta:last", "description": "z"}]}`, string(raw))

	known, err := f.v.KnownTags(ctx)
	require.NoError(t, err)
	assert.NotContains(t, known, "zeta:last", "a definition does not add the tag to the known-tag set")

	f.defs.listErr = errStoreDown
	_, err = f.v.Glossary(ctx)
	assert.ErrorIs(t, err, errStoreDown)
}

func TestVocabularyPutDefinition(t *testing.T) {
	f := newVocab(t)
	ctx := context.Background()
	created := time.Date(2025, 1, 2, 10, 0, 0, 123456000, time.UTC)

	d, err := f.v.PutDefinition(ctx, "  Custom:Escalation  ", "Needs a human hand-off", "alice@example.com")
	require.NoError(t, err)
	assert.Equal(t, "Custom:Escalation", d.TagKey, "trimmed, not normalized")
	assert.Equal(t, "Needs a human hand-off", d.Description)
	require.NotNil(t, d.CreatedBy)
	assert.Equal(t, "alice@example.com", *d.CreatedBy)
	assert.Equal(t, created, d.CreatedAt, "UTC, truncated to microseconds")
	assert.Equal(t, created, d.UpdatedAt)
	assert.Equal(t, "etag-Custom:Escalation", d.ETag, "the stored definition is returned")

	f.clock.Advance(time.Hour)
	d, err = f.v.PutDefinition(ctx, "Custom:Escalation", "Hand it off", "bob@example.com")
	require.NoError(t, err)
	assert.Equal(t, "Hand it off", d.Description)
	assert.Equal(t, "alice@example.com", *d.CreatedBy, "an update keeps the creator")
	assert.Equal(t, created, d.CreatedAt)
	assert.Equal(t, created.Add(time.Hour), d.UpdatedAt)

	d, err = f.v.PutDefinition(ctx, "x", "", "")
	require.NoError(t, err)
	assert.Nil(t, d.CreatedBy, "no caller, no creator")
	assert.Equal(t, "", d.Description)

	f.defs.err = &gtc.Error{Code: gtc.CodeStoreUnavailable, Message: "down"}
	_, err = f.v.PutDefinition(ctx, "y", "d", "alice@example.com")
	assert.Equal(t, gtc.CodeStoreUnavailable, gtc.ErrorCode(err))
}

func TestVocabularyPutDefinitionValidation(t *testing.T) {
	tests := []struct {
		name       string
		key, desc  string
		wantFields []gtc.FieldError
	}{
		{"empty key", "", "d", []gtc.FieldError{{Field: "tag_key", Message: "must be at least 1 character"}}},
		{"blank key", " \t\n ", "d", []gtc.FieldError{{Field: "tag_key", Message: "must be at least 1 character"}}},
		{"key too long", strings.Repeat("k", 201), "d", []gtc.FieldError{{Field: "tag_key", Message: "must be at most 200 characters"}}},
		{"key too long in code points", strings.Repeat("é", 201), "d", []gtc.FieldError{{Field: "tag_key", Message: "must be at most 200 characters"}}},
		{"description too long", "k", strings.Repeat("d", 10001), []gtc.FieldError{{Field: "description", Message: "must be at most 10000 characters"}}},
		{"both", "", strings.Repeat("ü", 10001), []gtc.FieldError{
			{Field: "tag_key", Message: "must be at least 1 character"},
			{Field: "description", Message: "must be at most 10000 characters"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newVocab(t)
			_, err := f.v.PutDefinition(context.Background(), tt.key, tt.desc, "alice@example.com")
			e, ok := gtc.AsError(err)
			require.True(t, ok, "got %v", err)
			assert.Equal(t, gtc.CodeValidation, e.Code)
			assert.Equal(t, tt.wantFields, e.Fields)
			assert.Equal(t, gtc.ValidationDetail(tt.wantFields), e.Message)
			assert.Empty(t, f.defs.upserts, "nothing is stored")
		})
	}

	// The limits themselves are allowed; a key is measured after trimming.
	f := newVocab(t)
	_, err := f.v.PutDefinition(context.Background(), "  "+strings.Repeat("é", 200)+"  ", strings.Repeat("ü", 10000), "a")
	assert.NoError(t, err)
}

func TestVocabularyDeleteDefinition(t *testing.T) {
	f := newVocab(t)
	ctx := context.Background()
	_, err := f.v.PutDefinition(ctx, "custom:escalation", "d", "alice@example.com")
	require.NoError(t, err)

	require.NoError(t, f.v.DeleteDefinition(ctx, "custom:escalation"))
	_, err = f.defs.Get(ctx, "custom:escalation")
	assert.ErrorIs(t, err, gtc.ErrNotFound)

	err = f.v.DeleteDefinition(ctx, "custom:escalation")
	e, ok := gtc.AsError(err)
	require.True(t, ok, "got %v", err)
	assert.Equal(t, &gtc.Error{Code: gtc.CodeNotFound, Message: "Tag definition 'custom:escalation' not found"}, e)

	f.defs.err = errStoreDown
	err = f.v.DeleteDefinition(ctx, "custom:escalation")
	assert.ErrorIs(t, err, errStoreDown)
	assert.NotEqual(t, gtc.CodeNotFound, gtc.ErrorCode(err))

	// A store that wraps ErrNotFound is still a 404.
	f.defs.err = fmt.Errorf("sqlite: %w", gtc.ErrNotFound)
	assert.Equal(t, gtc.CodeNotFound, gtc.ErrorCode(f.v.DeleteDefinition(ctx, "k")))
}

func TestCheckStoreOverlap(t *testing.T) {
	reg := defaultRegistry(t)
	ctx := context.Background()

	err, warning := CheckStoreOverlap(ctx, reg, newFakeTagStore("custom:x", "source:sme"))
	assert.NoError(t, err)
	assert.Empty(t, warning)

	err, warning = CheckStoreOverlap(ctx, reg, newFakeTagStore())
	assert.NoError(t, err)
	assert.Empty(t, warning)

	// Legacy entries are compared after normalization; entries that are not tags are skipped.
	err, _ = CheckStoreOverlap(ctx, reg, newFakeTagStore("custom:x", "Turns : MultiTurn", "dataset:old", "nocolon", "answer:no_answer", "dataset:old"))
	assert.EqualError(t, err, "Tag store overlaps computed tag keys: answer:no_answer, dataset:old, turns:multiturn")

	store := newFakeTagStore("turns:multiturn")
	store.listErr = errStoreDown
	err, warning = CheckStoreOverlap(ctx, reg, store)
	assert.NoError(t, err, "an unreadable store does not stop startup")
	assert.Contains(t, warning, "Tag store could not be read")
	assert.Contains(t, warning, "store unreachable")
}

func TestVocabularyTagsAreComposedAndVisible(t *testing.T) {
	ctx := context.Background()
	f := newVocab(t)
	_, err := f.v.AddTags(ctx, []string{"Cafe\u0301:Cre\u0300me", "café:crème"})
	require.NoError(t, err)
	assert.Equal(t, []string{"Add café:crème"}, f.tags.writes(), "NFD and NFC input are one tag, stored composed")

	_, err = f.v.AddTags(ctx, []string{"custom:ok", "sour\u200bce:synthetic"})
	var fe *gtc.TagFormatError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, []gtc.TagProblem{{Index: 1,
		Message: "Invalid tag format (invisible format character U+200B is not allowed): 'sour\u200bce:synthetic'"}}, fe.Problems)
	assert.Len(t, f.tags.writes(), 1, "nothing is stored")
}

func TestVocabularyRemoveTagsStoredSpellings(t *testing.T) {
	// Entries written before tags were composed, or by other tools: the known-tag set shows
	// them normalized, and removing that tag removes them.
	ctx := context.Background()
	f := newVocab(t, "cafe\u0301:crème", "Custom:B", "custom:c", "café:crème")
	known, err := f.v.KnownTags(ctx)
	require.NoError(t, err)
	assert.Subset(t, known, []string{"café:crème", "custom:b", "custom:c"})

	require.NoError(t, f.v.RemoveTags(ctx, []string{"CAFÉ:CRÈME", "custom:b"}))
	assert.Equal(t, []string{"Remove café:crème,custom:b,cafe\u0301:crème,Custom:B"}, f.tags.writes())
	known, err = f.v.KnownTags(ctx)
	require.NoError(t, err)
	assert.NotContains(t, known, "café:crème")
	assert.NotContains(t, known, "custom:b")
	assert.Contains(t, known, "custom:c")

	f.tags.listErr = errStoreDown
	assert.ErrorIs(t, f.v.RemoveTags(ctx, []string{"custom:c"}), errStoreDown)
	assert.Len(t, f.tags.writes(), 1, "nothing removed without the stored list")
}

func TestVocabularyDefinitionKeys(t *testing.T) {
	ctx := context.Background()
	f := newVocab(t)
	d, err := f.v.PutDefinition(ctx, " Cafe\u0301:x ", "d", "alice@example.com")
	require.NoError(t, err)
	assert.Equal(t, "Café:x", d.TagKey, "trimmed and composed, case kept")
	_, err = f.v.PutDefinition(ctx, "Café:x", "d2", "bob@example.com")
	require.NoError(t, err)
	defs, err := f.defs.List(ctx)
	require.NoError(t, err)
	assert.Len(t, defs, 1, "both spellings name one definition")

	_, err = f.v.PutDefinition(ctx, "source:\u202eems", "d", "alice@example.com")
	e, ok := gtc.AsError(err)
	require.True(t, ok, "got %v", err)
	assert.Equal(t, []gtc.FieldError{{Field: "tag_key", Message: "tag_key contains an invisible format character (U+202E), which is not allowed"}}, e.Fields)

	require.NoError(t, f.v.DeleteDefinition(ctx, "Cafe\u0301:x"), "deleted by its other spelling")
	_, err = f.defs.Get(ctx, "Café:x")
	assert.ErrorIs(t, err, gtc.ErrNotFound)

	// A definition stored under a decomposed key before keys were composed can still be
	// deleted by that key.
	_, _, err = f.defs.Upsert(ctx, &gtc.TagDefinition{TagKey: "Cafe\u0301:old", Description: "legacy"})
	require.NoError(t, err)
	require.NoError(t, f.v.DeleteDefinition(ctx, "Cafe\u0301:old"))
	_, err = f.defs.Get(ctx, "Cafe\u0301:old")
	assert.ErrorIs(t, err, gtc.ErrNotFound)
	assert.Equal(t, gtc.CodeNotFound, gtc.ErrorCode(f.v.DeleteDefinition(ctx, "Cafe\u0301:old")))
}
