<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * One acquire call: the core's `lock/attempt.rs` without a deadline (docs/semantics.md).
 *
 * @internal
 */
final class LockAttempt
{
    /** Writes per call while the lock changes hands between a failed write and the look at its holder. */
    private const ACQUIRE_WRITES = 3;
    /** Writes without an answer before the clean-up, and the pause before the resend (µs). */
    private const UNKNOWN_WRITES = 2;
    private const RESEND_PAUSE_US = 50000;
    /** Tries refused before they could land (throttled, never connected), and their backoff (µs). */
    private const ACQUIRE_TRIES = 3;
    private const REFUSED_PAUSE_US = 50000;
    private const REFUSED_PAUSE_MAX_US = 1000000;

    public function __construct(private LockRequests $requests, private LockFactory $locks)
    {
    }

    /**
     * Takes lock `$name` for `$owner` for `$seconds`: the lease, or null when someone holds it.
     *
     * @param  mixed  $owner
     * @param  int|float  $seconds  as Laravel's add() takes it
     * @return array{expires_at: int, fence: int|null, recovered: bool}|null
     *
     * @throws OutcomeUnknownException|LockException
     */
    public function acquire(string $name, $owner, $seconds): ?array
    {
        $stored = $this->locks->stored($owner);
        $attempt = $this->locks->attemptId();
        [$unknown, $failure, $writes, $refused, $pause, $expiresAt] = [null, null, 0, 0, self::REFUSED_PAUSE_US, 0];
        while (true) {
            $writes++;
            $now = $this->locks->now();
            $expiresAt = $this->locks->expiry($seconds);
            try {
                $answer = $this->requests->takeLock(
                    $name,
                    $stored,
                    $attempt,
                    $expiresAt,
                    $now - $this->locks->margin,
                    $this->locks->fenceBase()
                );
            } catch (DynamoDbException $e) {
                if (AwsFault::mayHaveCommitted($e)) {
                    // No answer: the write may have landed. Send it again (same attempt id), once.
                    $unknown = $e;
                    if ($writes < self::UNKNOWN_WRITES) {
                        usleep(self::RESEND_PAUSE_US);
                        continue;
                    }
                    break;
                }
                if (AwsFault::refusedBeforeLanding($e) && $refused + 1 < self::ACQUIRE_TRIES) {
                    $refused++;
                    $writes--;
                    usleep($pause - random_int(0, intdiv($pause, 2)));
                    $pause = min($pause * 2, self::REFUSED_PAUSE_MAX_US);
                    continue;
                }
                if ($unknown !== null) {
                    $failure = $e; // an earlier try may have landed: clean it up
                    break;
                }
                throw LockException::fromAws($e, 'acquire', $this->locks->table, $this->locks->tableKey($name), $owner);
            }
            if ($answer['written']) {
                return ['expires_at' => $expiresAt, 'fence' => $answer['fence'], 'recovered' => false];
            }
            $old = $answer['old'];
            if ($old !== null) {
                $oldExpiry = $this->locks->expiryOf($old);
                if (($old[LockFactory::ATTEMPT_ATTRIBUTE]['S'] ?? null) === $attempt) {
                    if ($oldExpiry !== null && $oldExpiry > $this->locks->now()) {
                        // This call's own earlier write landed; its answer was lost.
                        return ['expires_at' => $oldExpiry, 'fence' => LockFactory::fenceOf($old), 'recovered' => true];
                    }
                } elseif ($oldExpiry === null || $oldExpiry >= $this->locks->now() - $this->locks->margin) {
                    return null;
                }
            }
            if ($writes >= self::ACQUIRE_WRITES) {
                break;
            }
        }
        if ($unknown === null) {
            return null; // the lock kept changing hands under us
        }
        [$cleanup, $found] = $this->cleanUp($name, $stored, $attempt, $expiresAt);

        throw OutcomeUnknownException::afterCleanUp(
            $failure ?? $unknown,
            $this->locks->table,
            $this->locks->tableKey($name),
            AwsFault::describe($unknown) . ($failure !== null ? '; then: ' . AwsFault::describe($failure) : ''),
            $cleanup,
            $found,
            $expiresAt,
            $owner
        );
    }

    /**
     * Removes this call's write if it is there: [OutcomeUnknownException::CLEANUP_*, in words].
     *
     * @param  array<string, string>  $stored
     * @return array{0: string, 1: string}
     */
    private function cleanUp(string $name, array $stored, string $attempt, int $expiresAt): array
    {
        try {
            // Keep-fence mode expires the write, as its release does.
            if ($this->requests->removeAttempt($name, $stored, $attempt, $this->locks->releasedExpiry())) {
                return [
                    OutcomeUnknownException::CLEANUP_DELETED,
                    'the write had landed and was deleted again: the lock is free',
                ];
            }

            return [
                OutcomeUnknownException::CLEANUP_NOT_FOUND,
                "nothing of this attempt's is there: the write did not land (or was taken over)",
            ];
        } catch (DynamoDbException $e) {
            return [OutcomeUnknownException::CLEANUP_FAILED, sprintf(
                'the clean-up delete failed too (%s): if the write landed, the lock stays until it expires, '
                . 'by %s UTC at the latest',
                AwsFault::describe($e),
                gmdate('Y-m-d H:i:s', $expiresAt)
            )];
        }
    }
}
