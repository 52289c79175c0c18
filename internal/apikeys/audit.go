package apikeys

import (
	"fmt"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/audit"
)

// auditedFields are the fields whose changes the trail records, by the action
// a change of each is. A key's hashes and prefixes are never in it.
var auditedFields = []struct {
	field  string
	action audit.Action
}{
	{HashField, audit.KeyRolled},
	{RevokedField, audit.KeyRevoked},
	{ExpiresField, audit.KeyExpiryChanged},
	{BanLiftedField, audit.KeyBanLifted},
	{PlanField, audit.KeyQuotaChanged},
	{PerMinuteField, audit.KeyQuotaChanged},
	{PerDayField, audit.KeyQuotaChanged},
	{ScopesField, audit.KeyScopesChanged},
	{CustomerField, audit.KeyCustomerChanged},
}

// WriteAudit writes, with tx (the transaction that saved after from before),
// one audit record per action the change amounts to, with the old and new
// values of its fields. A rolled key's details hold when its previous secret
// stops working, never a secret or its hash.
func WriteAudit(tx core.App, before, after *APIKey, by audit.Actor) error {
	details := map[audit.Action]map[string]any{}
	var order []audit.Action
	for _, f := range auditedFields {
		old, new := auditValue(before, f.field), auditValue(after, f.field)
		if fmt.Sprint(old) == fmt.Sprint(new) {
			continue
		}
		d, ok := details[f.action]
		if !ok {
			d = map[string]any{}
			details[f.action] = d
			order = append(order, f.action)
		}
		if f.action == audit.KeyRolled {
			d[PreviousUntilField] = after.GetString(PreviousUntilField)
			continue
		}
		d[f.field] = map[string]any{"old": old, "new": new}
	}
	for _, action := range order {
		if err := audit.Write(tx, audit.Entry{Action: action, Key: after.Id, By: by, Details: details[action]}); err != nil {
			return err
		}
	}
	return nil
}

// auditValue is the value of field as the trail records it: the scopes as
// a list of names, anything else as the text PocketBase stores.
func auditValue(k *APIKey, field string) any {
	if field == ScopesField {
		return ScopeNames(k.Scopes())
	}
	return k.GetString(field)
}
