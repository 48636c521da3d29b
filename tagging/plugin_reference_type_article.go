package tagging

import "regexp"

// articleNumber finds an article number anywhere in a URL, host included. [0-9] rather
// than \d keeps the digits ASCII on purpose.
var articleNumber = regexp.MustCompile(`(?i)cs[0-9]+`)

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
		if articleNumber.MatchString(u) {
			return KeyReferenceTypeArticle, true
		}
	}
	return "", false
}
