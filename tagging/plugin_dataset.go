package tagging

// DatasetPlugin emits "dataset:" + the item's datasetName. The name is used exactly as
// stored, without trimming or lower-casing, because tag filters compare it with the dataset
// name byte for byte (`dataset:DS One`).
type DatasetPlugin struct{}

// Key returns KeyDatasetDynamic, the placeholder that reserves the "dataset:" prefix.
func (DatasetPlugin) Key() string { return KeyDatasetDynamic }

// Description explains the tag family; it is never listed because the key is dynamic.
func (DatasetPlugin) Description() string { return "The dataset the item belongs to." }

// Compute emits "dataset:<datasetName>" when the item has a dataset name.
func (DatasetPlugin) Compute(in *Input) (string, bool) {
	if in.Item == nil || in.Item.DatasetName == "" {
		return "", false
	}
	return "dataset:" + in.Item.DatasetName, true
}
