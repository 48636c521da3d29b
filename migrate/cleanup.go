package migrate

import "slices"

// CleanTagStore is the tag-store clean-up of gtc migrate: every stored entry is
// normalized; entries that fail normalization and entries that are computed tags
// (isComputed with a nil computed list: static keys and dynamic prefixes) are removed. keep
// is the normalized remainder, sorted and unique; removed are the stored entries dropped,
// as stored, sorted and unique.
func CleanTagStore(entries []string, normalize func(string) (string, error), isComputed func(string, []string) bool) (keep, removed []string) {
	keep, removed = []string{}, []string{}
	for _, e := range entries {
		n, err := normalize(e)
		if err != nil || isComputed != nil && isComputed(n, nil) {
			removed = append(removed, e)
			continue
		}
		keep = append(keep, n)
	}
	slices.Sort(keep)
	slices.Sort(removed)
	return slices.Compact(keep), slices.Compact(removed)
}
