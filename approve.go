package gtc

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// Approval messages. Waivers compare against these constants, so a change of wording cannot
// silently disable a waiver.
const (
	MsgApprovalNoHistory       = "history must contain at least one conversation message"
	MsgApprovalNoUserTurn      = "history must include at least one user message"
	MsgApprovalNoAgentTurn     = "history must include at least one agent message"
	MsgApprovalNoRequiredTool  = "expectedTools.required must include at least one tool before approval when toolCalls are present"
	msgApprovalUnknownRequired = "expectedTools.required references toolCalls that do not exist: "
)

// ApprovalErrors runs the five core checks and the two waivers on the item as it would be
// stored and returns the remaining failures, in rule order.
func ApprovalErrors(it *Item) []FieldError {
	var errs []FieldError
	if len(it.History) == 0 {
		errs = append(errs, FieldError{Field: "history", Message: MsgApprovalNoHistory})
	} else {
		var user, agent bool
		for _, h := range it.History {
			if IsUserRole(h.Role) {
				user = true
			} else {
				agent = true
			}
		}
		if !user {
			errs = append(errs, FieldError{Field: "history", Message: MsgApprovalNoUserTurn})
		}
		if !agent {
			errs = append(errs, FieldError{Field: "history", Message: MsgApprovalNoAgentTurn})
		}
	}
	if len(it.ToolCalls) > 0 && len(it.ExpectedTools.Required) == 0 {
		errs = append(errs, FieldError{Field: "expectedTools.required", Message: MsgApprovalNoRequiredTool})
	}
	called := make(map[string]bool, len(it.ToolCalls))
	for _, tc := range it.ToolCalls {
		called[strings.TrimSpace(tc.Name)] = true
	}
	missing := map[string]bool{}
	for _, r := range it.ExpectedTools.Required {
		if n := strings.TrimSpace(r.Name); !called[n] {
			missing[n] = true
		}
	}
	if len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		errs = append(errs, FieldError{Field: "expectedTools.required", Message: msgApprovalUnknownRequired + strings.Join(names, ", ")})
	}
	if len(errs) == 0 {
		return nil
	}
	waived := map[string]bool{}
	if ReferenceCount(it) >= 1 {
		waived[MsgApprovalNoAgentTurn] = true
		waived[MsgApprovalNoRequiredTool] = true
	}
	if canBypassRequiredTools(it) {
		waived[MsgApprovalNoRequiredTool] = true
	}
	kept := errs[:0]
	for _, e := range errs {
		if !waived[e.Message] {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// canBypassRequiredTools reports whether any plugin payload has data.canBypassRequiredTools
// equal to JSON true.
func canBypassRequiredTools(it *Item) bool {
	for _, p := range it.Plugins {
		if !bytes.Contains(p.Data, []byte("canBypassRequiredTools")) {
			continue
		}
		var d map[string]json.RawMessage
		if json.Unmarshal(p.Data, &d) == nil && string(bytes.TrimSpace(d["canBypassRequiredTools"])) == "true" {
			return true
		}
	}
	return false
}

// ApprovalError returns the 400 INVALID_APPROVAL error for failed approval rules.
func ApprovalError(fields []FieldError) *Error {
	msgs := make([]string, len(fields))
	for i, f := range fields {
		msgs[i] = f.Message
	}
	return &Error{Code: CodeInvalidApproval, Message: "Item cannot be approved: " + strings.Join(msgs, "; "), Fields: fields}
}
