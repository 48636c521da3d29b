package tagging

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		raw     string
		want    string
		wantErr string
	}{
		{raw: "  Source : SME  ", want: "source:sme"},
		{raw: "a : b : C", want: "a:b:c"},
		{raw: "  Topic   Area :  Some  Value ", want: "topic area:some value"},
		{raw: "SOURCE:Sme_Curated", want: "source:sme_curated"},
		{raw: "x:y:z", want: "x:y:z"},
		{raw: "rephrase:Sleek-Voxel", want: "rephrase:sleek-voxel"},
		{raw: "Turns:MultiTurn", want: "turns:multiturn"},
		{raw: "\tgroup\u00a0name\n:\u2003value\u3000two ", want: "group name:value two"},
		{raw: "a:\tb \n : c", want: "a:b:c"},
		{raw: "nocolon", wantErr: "Invalid tag format (expected group:value): 'nocolon'"},
		{raw: "   ", wantErr: "Invalid tag format (expected group:value): '   '"},
		{raw: "", wantErr: "Invalid tag format (expected group:value): ''"},
		{raw: ":x", wantErr: "Invalid tag format (empty group or value): ':x'"},
		{raw: "x:", wantErr: "Invalid tag format (empty group or value): 'x:'"},
		{raw: " : ", wantErr: "Invalid tag format (empty group or value): ' : '"},
		{raw: "::", wantErr: "Invalid tag format (empty group or value): '::'"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := Normalize(tt.raw)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				var ite *InvalidTagError
				require.True(t, errors.As(err, &ite))
				assert.Equal(t, tt.raw, ite.Raw)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNormalizeValueKeepsLaterColons(t *testing.T) {
	// "a::b" has a colon but the value is ":b" after the first split, which is not empty.
	got, err := Normalize("a::b")
	require.NoError(t, err)
	assert.Equal(t, "a::b", got)
}

func TestParse(t *testing.T) {
	group, value, err := Parse("  Topic Area : Some : Value ")
	require.NoError(t, err)
	assert.Equal(t, "topic area", group)
	assert.Equal(t, "some:value", value)

	_, _, err = Parse("nocolon")
	assert.EqualError(t, err, "Invalid tag format (expected group:value): 'nocolon'")
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"  Source : SME  ", "a : b : C", "  Topic   Area :  Some  Value ", "SOURCE:Sme_Curated",
		"x:y:z", "rephrase:Sleek-Voxel", "nocolon", "   ", ":x", "x:", " : ", "a::b",
		"İstanbul:ẞ", "\u0085a\u00a0:\u2028b", "\xff:\xfe", "K:Ω",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := Normalize(raw)
		if err != nil {
			noColon := "Invalid tag format (expected group:value): '" + raw + "'"
			empty := "Invalid tag format (empty group or value): '" + raw + "'"
			if err.Error() != noColon && err.Error() != empty {
				t.Fatalf("Normalize(%q) error %q is not one of the spec messages", raw, err)
			}
			return
		}
		if strings.TrimFunc(got, unicode.IsSpace) != got {
			t.Fatalf("Normalize(%q) = %q has surrounding whitespace", raw, got)
		}
		group, value, ok := strings.Cut(got, ":")
		if !ok || group == "" || value == "" {
			t.Fatalf("Normalize(%q) = %q is not group:value", raw, got)
		}
		again, err := Normalize(got)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, which fails to normalize again: %v", raw, got, err)
		}
		if again != got {
			t.Fatalf("Normalize is not idempotent: %q -> %q -> %q", raw, got, again)
		}
	})
}
