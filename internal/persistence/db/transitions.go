package db

import "wharf/internal/persistence"

// Changes is what one committed transaction changed, as the metrics count it: every
// delivery transition and every message status it derived anew.
type Changes struct {
	Deliveries []DeliveryChange
	Messages   []StatusChange
}

// DeliveryChange is one delivery moving from one state to another.
type DeliveryChange struct {
	Target   persistence.InstanceName
	From, To persistence.DeliveryState
}

// StatusChange is one message entering a status, with what the metrics label it by (the
// source instance and the sending party, both resolved to bounded labels by the
// consumer).
type StatusChange struct {
	Source persistence.InstanceName
	From   persistence.PartyName
	Status persistence.MessageStatus
}

// OnChanges sets fn to be called after every commit that changed a delivery's state or a
// message's status, once per commit. fn runs on the committing goroutine and must not
// block; nil removes it.
func (s *Store) OnChanges(fn func(Changes)) {
	if fn == nil {
		s.onChanges.Store(nil)
		return
	}
	s.onChanges.Store(&fn)
}

// noteDelivery records a delivery transition for OnChanges.
func (t *txn) noteDelivery(tr transition) {
	if t.s.onChanges.Load() == nil {
		return
	}
	t.changes.Deliveries = append(t.changes.Deliveries, DeliveryChange{Target: tr.d.Target, From: tr.from, To: tr.d.State})
}

// noteStatus records a message's new status for OnChanges.
func (t *txn) noteStatus(m persistence.Message, status persistence.MessageStatus) {
	if t.s.onChanges.Load() == nil {
		return
	}
	t.changes.Messages = append(t.changes.Messages, StatusChange{Source: m.Source, From: m.From, Status: status})
}

// reportChanges hands a committed transaction's changes to the OnChanges hook.
func (s *Store) reportChanges(t *txn) {
	if len(t.changes.Deliveries) == 0 && len(t.changes.Messages) == 0 {
		return
	}
	if fn := s.onChanges.Load(); fn != nil {
		(*fn)(t.changes)
	}
}
