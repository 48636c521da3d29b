package tagging

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func strp(s string) *string { return &s }

// testSchema has two exclusive groups, one free group and two dependency rules.
func testSchema() Schema {
	return NewSchema(
		GroupSpec{Name: "source", Values: []string{"sme", "synthetic", "user"}, Exclusive: true},
		GroupSpec{Name: "difficulty", Values: []string{"easy", "hard"}, Exclusive: true},
		GroupSpec{Name: "topic", Values: []string{"a", "b"}},
		GroupSpec{Name: "review", Values: []string{"done"}, DependsOn: []string{"turns:multiturn", "source:sme"}},
		GroupSpec{Name: "audit", Values: []string{"x"}, DependsOn: []string{"topic:a"}, Description: strp("d")},
	)
}

func TestExclusiveGroup(t *testing.T) {
	v := NewExclusiveGroup(testSchema())
	assert.Equal(t, "exclusive_group", v.Name())
	tests := []struct {
		name     string
		manual   []string
		computed []string
		want     []string
	}{
		{"one value each", []string{"difficulty:easy", "source:sme", "topic:a"}, nil, nil},
		{"free group takes many", []string{"topic:a", "topic:b", "topic:c"}, nil, nil},
		{"two source values", []string{"source:synthetic", "source:sme"}, nil,
			[]string{"Group 'source' is exclusive; only one value allowed, got: ['sme', 'synthetic']"}},
		{"values sorted, groups in name order", []string{"source:user", "source:sme", "difficulty:hard", "difficulty:easy", "source:synthetic"}, nil,
			[]string{
				"Group 'difficulty' is exclusive; only one value allowed, got: ['easy', 'hard']",
				"Group 'source' is exclusive; only one value allowed, got: ['sme', 'synthetic', 'user']",
			}},
		{"values outside the schema count", []string{"source:sme", "source:new value"}, nil,
			[]string{"Group 'source' is exclusive; only one value allowed, got: ['new value', 'sme']"}},
		{"values are not escaped", []string{"source:it's", "source:sme"}, nil,
			[]string{"Group 'source' is exclusive; only one value allowed, got: ['it's', 'sme']"}},
		{"computed tags are part of the union", []string{"source:sme"}, []string{"source:user"},
			[]string{"Group 'source' is exclusive; only one value allowed, got: ['sme', 'user']"}},
		{"same tag in both lists is one value", []string{"source:sme"}, []string{"source:sme"}, nil},
		{"unknown and computed groups are never exclusive", []string{"custom:a", "custom:b", "rephrase:x", "rephrase:y"},
			[]string{"reference_type:article", "reference_type:helpcenter"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, v.Validate(tt.manual, tt.computed))
		})
	}
}

func TestDependency(t *testing.T) {
	v := NewDependency(testSchema())
	assert.Equal(t, "dependency", v.Name())
	tests := []struct {
		name     string
		manual   []string
		computed []string
		want     []string
	}{
		{"group absent", []string{"topic:b"}, nil, nil},
		{"all present, computed counts", []string{"review:done", "source:sme"}, []string{"turns:multiturn"}, nil},
		{"missing dependencies sorted", []string{"review:done"}, nil, []string{
			"Tag group 'review' requires 'source:sme' to be present",
			"Tag group 'review' requires 'turns:multiturn' to be present",
		}},
		{"any value of the group triggers", []string{"review:other"}, []string{"turns:multiturn"}, []string{
			"Tag group 'review' requires 'source:sme' to be present",
		}},
		{"groups in name order", []string{"review:done", "audit:x", "source:sme"}, nil, []string{
			"Tag group 'audit' requires 'topic:a' to be present",
			"Tag group 'review' requires 'turns:multiturn' to be present",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, v.Validate(tt.manual, tt.computed))
		})
	}
}

func TestDependencyInertWithDefaultGroups(t *testing.T) {
	v := NewDependency(defaultGroups(t).Schema())
	assert.Empty(t, v.Validate([]string{"source:sme", "topic:install", "intent:other"}, []string{"turns:multiturn"}))
}

func TestExclusiveGroupWithDefaultGroups(t *testing.T) {
	v := NewExclusiveGroup(defaultGroups(t).Schema())
	got := v.Validate([]string{
		"answerability:answerable", "answerability:not_answerable", "difficulty:easy", "difficulty:hard",
		"expertise:expert", "expertise:novice", "intent:action", "intent:other", "source:sme", "source:synthetic",
		"topic:general", "topic:install",
	}, nil)
	assert.Equal(t, []string{
		"Group 'answerability' is exclusive; only one value allowed, got: ['answerable', 'not_answerable']",
		"Group 'difficulty' is exclusive; only one value allowed, got: ['easy', 'hard']",
		"Group 'expertise' is exclusive; only one value allowed, got: ['expert', 'novice']",
		"Group 'source' is exclusive; only one value allowed, got: ['sme', 'synthetic']",
	}, got)
}

// fixedValidator returns fixed messages.
type fixedValidator struct {
	name string
	msgs []string
}

func (v fixedValidator) Name() string                    { return v.name }
func (v fixedValidator) Validate(_, _ []string) []string { return v.msgs }

func TestValidateTags(t *testing.T) {
	got := ValidateTags([]TagValidator{
		fixedValidator{"a", []string{"first", "shared"}},
		fixedValidator{"b", nil},
		fixedValidator{"c", []string{"shared", "third", "first"}},
	}, nil, nil)
	assert.Equal(t, []string{"first", "shared", "third"}, got)

	got = ValidateTags(nil, []string{"source:sme", "source:user"}, nil)
	assert.NotNil(t, got)
	assert.Empty(t, got)
}

func TestNewValidators(t *testing.T) {
	schema := testSchema()
	tests := []struct {
		name    string
		names   []string
		want    []string
		wantErr string
	}{
		{"nil means default", nil, []string{"exclusive_group", "dependency"}, ""},
		{"blank means default", []string{"", "  "}, []string{"exclusive_group", "dependency"}, ""},
		{"none disables", []string{"none"}, []string{}, ""},
		{"none trimmed", []string{" none "}, []string{}, ""},
		{"run order kept", []string{"dependency", "exclusive_group"}, []string{"dependency", "exclusive_group"}, ""},
		{"single validator", []string{" exclusive_group "}, []string{"exclusive_group"}, ""},
		{"repeat built once", []string{"dependency", "dependency"}, []string{"dependency"}, ""},
		{"unknown name", []string{"exclusive_group", "spelling"}, nil, "Unknown tag validator 'spelling'"},
		{"none with others", []string{"none", "dependency"}, nil, "Unknown tag validator 'none'"},
		{"names are case-sensitive", []string{"Dependency"}, nil, "Unknown tag validator 'Dependency'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := NewValidators(tt.names, schema)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				assert.Nil(t, vs)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, vs)
			names := make([]string, len(vs))
			for i, v := range vs {
				names[i] = v.Name()
			}
			assert.Equal(t, tt.want, names)
		})
	}
}

func TestNewValidatorsUseTheSchema(t *testing.T) {
	vs, err := NewValidators(nil, testSchema())
	require.NoError(t, err)
	got := ValidateTags(vs, []string{"review:done", "source:synthetic", "source:user"}, []string{"turns:multiturn"})
	assert.Equal(t, []string{
		"Group 'source' is exclusive; only one value allowed, got: ['synthetic', 'user']",
		"Tag group 'review' requires 'source:sme' to be present",
	}, got)
}

func TestRegisterValidator(t *testing.T) {
	cat := map[string]ValidatorFactory{}
	factory := func(Schema) TagValidator { return fixedValidator{name: "custom", msgs: []string{"custom says no"}} }
	require.NoError(t, RegisterValidator(cat, "custom", factory))
	assert.EqualError(t, RegisterValidator(cat, "custom", factory), "Duplicate tag validator 'custom'")
	assert.Error(t, RegisterValidator(cat, "other", nil))

	vs, err := NewValidatorsFrom(cat, []string{"custom"}, Schema{})
	require.NoError(t, err)
	assert.Equal(t, []string{"custom says no"}, ValidateTags(vs, nil, nil))

	_, err = NewValidatorsFrom(cat, nil, Schema{})
	assert.EqualError(t, err, "Unknown tag validator 'exclusive_group'", "the default names must exist in the catalogue")
}

func TestNewSchemaKeepsFirstOfRepeatedName(t *testing.T) {
	s := NewSchema(GroupSpec{Name: "a", Values: []string{"x"}}, GroupSpec{Name: "b"}, GroupSpec{Name: "a", Exclusive: true})
	assert.Equal(t, []string{"a", "b"}, s.Order)
	assert.False(t, s.Groups["a"].Exclusive)
	assert.Equal(t, []string{"a:x"}, s.Groups["a"].Tags())
}
