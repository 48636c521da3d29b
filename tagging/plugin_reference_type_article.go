package tagging

// ReferenceTypeArticlePlugin emits KeyReferenceTypeArticle when some reference URL contains
// an article number: "cs" in any case followed by ASCII digits ("…/CS431120", "abcs12.example";
// not "cs-123"). The reference's own type field is ignored.
type ReferenceTypeArticlePlugin struct{}

// Key returns KeyReferenceTypeArticle.
func (ReferenceTypeArticlePlugin) Key() string { return KeyReferenceTypeArticle }

// Description explains the tag in the glossary.
func (ReferenceTypeArticlePlugin) Description() string {
	return "A reference URL contains an article number (CS followed by digits)."
}

// Compute emits the key when any reference URL contains an article number.
func (ReferenceTypeArticlePlugin) Compute(in *Input) (string, bool) {
	for _, u := range in.ReferenceURLs {
		if hasArticleNumber(u) {
			return KeyReferenceTypeArticle, true
		}
	}
	return "", false
}

// hasArticleNumber reports whether u matches the regular expression (?i)cs[0-9] anywhere,
// without running a regexp engine on every URL of every write. Case-insensitive matching
// in Go's regexp uses Unicode simple folding, under which 's' also matches 'ſ' (U+017F LATIN
// SMALL LETTER LONG S); 'c' folds only to 'C'. [0-9] stays ASCII.
func hasArticleNumber(u string) bool {
	for i := 0; i+2 < len(u); i++ {
		if u[i] != 'c' && u[i] != 'C' {
			continue
		}
		j := i + 1
		switch {
		case u[j] == 's' || u[j] == 'S':
			j++
		case u[j] == 0xc5 && u[j+1] == 0xbf: // ſ
			j += 2
		default:
			continue
		}
		if j < len(u) && '0' <= u[j] && u[j] <= '9' {
			return true
		}
	}
	return false
}
