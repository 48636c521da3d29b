package tagging

import (
	"fmt"
	"strings"
)

// TagValidator enforces a rule over the complete tag set of an item.
// Validators get the tag schema at construction and must be deterministic and pure.
type TagValidator interface {
	// Name is stable, lower-case and unique among validators (e.g. "exclusive_group").
	Name() string
	// Validate returns one message per violation; nil or empty means valid. manual is
	// normalized, stripped and sorted; computed is in plugin order.
	Validate(manual, computed []string) []string
}

// ValidateTags runs every validator in order, without short-circuiting, and concatenates
// their messages, dropping exact duplicates. An empty (non-nil) result means the tags are
// valid.
func ValidateTags(validators []TagValidator, manual, computed []string) []string {
	out := []string{}
	var seen map[string]struct{} // made on the first message: valid tag sets are the rule
	for _, v := range validators {
		for _, m := range v.Validate(manual, computed) {
			if seen == nil {
				seen = map[string]struct{}{}
			}
			if _, dup := seen[m]; dup {
				continue
			}
			seen[m] = struct{}{}
			out = append(out, m)
		}
	}
	return out
}

// Names of the built-in validators.
const (
	ValidatorExclusiveGroup = "exclusive_group"
	ValidatorDependency     = "dependency"
	// ValidatorsNone, as the only entry of GTC_TAG_VALIDATORS, disables every validator.
	ValidatorsNone = "none"
)

// DefaultValidatorNames returns what an unset or empty GTC_TAG_VALIDATORS means, in run
// order.
func DefaultValidatorNames() []string { return []string{ValidatorExclusiveGroup, ValidatorDependency} }

// ValidatorFactory builds a validator from the tag schema.
type ValidatorFactory func(schema Schema) TagValidator

// RegisterValidator adds a factory to a validator catalogue under name; a name registered
// twice is a startup error, so two validators can never silently shadow each other.
func RegisterValidator(catalogue map[string]ValidatorFactory, name string, factory ValidatorFactory) error {
	if _, dup := catalogue[name]; dup {
		return specError("Duplicate tag validator '%s'", name)
	}
	if factory == nil {
		return fmt.Errorf("tag validator '%s' has no constructor", name)
	}
	catalogue[name] = factory
	return nil
}

// NewValidators builds the validators GTC_TAG_VALIDATORS names, in run order, from the
// built-in catalogue. names are the already comma-split entries of the setting; they are
// trimmed and blank entries dropped. No names means DefaultValidatorNames(); the single name
// "none" means no validators; an unknown name is an error.
func NewValidators(names []string, schema Schema) ([]TagValidator, error) {
	catalogue := map[string]ValidatorFactory{}
	for _, r := range []struct {
		name    string
		factory ValidatorFactory
	}{
		{ValidatorExclusiveGroup, func(s Schema) TagValidator { return NewExclusiveGroup(s) }},
		{ValidatorDependency, func(s Schema) TagValidator { return NewDependency(s) }},
	} {
		if err := RegisterValidator(catalogue, r.name, r.factory); err != nil {
			return nil, err
		}
	}
	return NewValidatorsFrom(catalogue, names, schema)
}

// NewValidatorsFrom is NewValidators over a caller-built catalogue. A name listed twice is
// built once, at its first position: running a rule twice could only repeat its messages.
func NewValidatorsFrom(catalogue map[string]ValidatorFactory, names []string, schema Schema) ([]TagValidator, error) {
	var wanted []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			wanted = append(wanted, n)
		}
	}
	switch {
	case len(wanted) == 0:
		wanted = DefaultValidatorNames()
	case len(wanted) == 1 && wanted[0] == ValidatorsNone:
		return []TagValidator{}, nil
	}
	out := make([]TagValidator, 0, len(wanted))
	built := map[string]struct{}{}
	for _, n := range wanted {
		factory, ok := catalogue[n]
		if !ok {
			return nil, specError("Unknown tag validator '%s'", n)
		}
		if _, dup := built[n]; dup {
			continue
		}
		built[n] = struct{}{}
		out = append(out, factory(schema))
	}
	return out, nil
}
