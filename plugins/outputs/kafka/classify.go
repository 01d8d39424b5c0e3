package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/morse-agent/morse"
)

// classify sorts a record's error: permanent errors carry a drop reason; batchWide ones are
// given by the broker to a whole batch, so that the record may not be at fault.
func classify(err error) (reason string, permanent, batchWide bool) {
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return ReasonMessageTooLarge, true, true
	case errors.Is(err, kerr.InvalidTimestamp):
		return ReasonInvalidTimestamp, true, true
	case errors.Is(err, kerr.InvalidRecord):
		return ReasonInvalidRecord, true, true
	case errors.Is(err, kerr.InvalidTopicException):
		return ReasonInvalidTopic, true, false
	}
	return "", false, false
}

// unauthorized marks a refusal of the credentials as morse.ErrUnauthorized, so that
// unauthorized_retry_max_age applies to it: an operator can grant the ACL or fix the
// password while the data waits.
func unauthorized(err error) error {
	switch {
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("%w: %w", morse.ErrUnauthorized, err)
	}
	return err
}

// WriteTimeout bounds one write at twice timeout: timeout for the brokers to take the
// records, and as much again to retry, without handing the batch back, the part that a
// partition refused for a while. The batch writer's default (30 s, the default timeout)
// would leave no time for that, and cut a longer timeout short.
func (k *Kafka) WriteTimeout() time.Duration { return 2 * time.Duration(k.Timeout) }
