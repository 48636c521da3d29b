package tagging

import "strings"

// ParseAllowList turns the entries of GTC_ALLOWED_MANUAL_TAGS (already split on commas by
// the config loader) into normalized, unique, sorted tags. Blank
// entries are dropped; an entry that fails normalization stops startup.
func ParseAllowList(entries []string) ([]string, error) {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		t, err := Normalize(e)
		if err != nil {
			return nil, specError("GTC_ALLOWED_MANUAL_TAGS contains an invalid tag: %s", err)
		}
		out = append(out, t)
	}
	return sortedUnique(out), nil
}
