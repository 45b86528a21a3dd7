<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

/**
 * The ported tests left out of the run, per Laravel version ('8.83', '13', or '*' for both), each
 * because it fails on stock Laravel's DynamoDB store there; tests/Laravel/README.md lists them with
 * the same reasons, and the measured results of every test, these included.
 */
final class Excluded
{
    private const PROTECTED_OWNED = "Laravel 8.83's Lock::isOwnedByCurrentProcess() is protected (public since 10.x,"
        . " PR #49272): an Error on stock Laravel; the driver's is public on every version";

    private const NO_IS_OWNED_BY = "Laravel 8.83's lock has no isOwnedBy() (11.x, PR #51393) and a protected"
        . " isOwnedByCurrentProcess(): an Error on stock Laravel; the driver has both, public, on every version";

    private const NO_REFRESH = "Laravel 8.83's lock has no refresh() (the DynamoDB lock's is 12.63+): an Error on"
        . " stock Laravel; the driver's refresh() is on every version";

    /** @var array<string, array<string, string>> 'Class::method' => [version => reason] */
    public const TESTS = [
        'ArrayStoreLockTest::testCanAcquireLockAgainAfterExpiry' => [
            '*' => "ArrayStore's semantics: its lock is free at the very instant it expires (`expiresAt` no"
                . " longer in the future); Laravel's DynamoDB lock is taken over only once `expires_at < now`,"
                . " a second later",
        ],
        'ArrayStoreLockTest::testLockWithNoExpirationNeverExpires' => [
            '*' => "ArrayStore's semantics: a lock without a ttl never expires; Laravel's DynamoDB lock turns a"
                . " ttl of 0 into 86400 s (DynamoDbLock::acquire())",
        ],
        'ArrayStoreLockTest::testOwnerStatusCanBeCheckedAfterRestoringLock' => ['8.83' => self::PROTECTED_OWNED],
        'ArrayStoreLockTest::testOtherOwnerDoesNotOwnLockAfterRestore' => ['8.83' => self::PROTECTED_OWNED],
        'ArrayStoreLockTest::testRestoringNonExistingLockDoesNotOwnAnything' => ['8.83' => self::PROTECTED_OWNED],
        'CacheLockTest::testOwnerStatusCanBeCheckedAfterRestoringLock' => ['8.83' => self::PROTECTED_OWNED],
        'CacheLockTest::testOtherOwnerDoesNotOwnLockAfterRestore' => ['8.83' => self::NO_IS_OWNED_BY],
        'CacheLockTest::testLockCanBeRefreshed' => ['8.83' => self::NO_REFRESH],
        'CacheLockTest::testLockCannotBeRefreshedByAnotherOwner' => ['8.83' => self::NO_REFRESH],
        'CacheLockTest::testLockRefreshWithDefaultSeconds' => ['8.83' => self::NO_REFRESH],
        'CacheLockTest::testConcurrentMemcachedLocksAreReleasedSafely' => [
            '8.83' => "Memcached's semantics: there the lock 'bar' is the cache item 'bar'; Laravel 8-11's DynamoDB"
                . " store keys a lock with the prefix twice, so has('bar') reads another item",
        ],
        'CacheLockTest::testCacheRememberReturnsValueWhenLockWithSameKeyExists' => [
            '13' => "Laravel 12+'s DynamoDB store keys a lock like a cache item (the prefix once), so the lock"
                . " 'my-key' IS the cache item 'my-key': remember() returns the lock's owner",
        ],
        'ConcurrencyLimiterTest::testItReleasesLockIfTaskTookTooLong' => [
            '*' => "sub-second expiry: a slot of 1 s taken again after 1.2 s; Laravel's DynamoDB lock keeps"
                . " `expires_at` in whole seconds and is taken over once `expires_at < now`, 1 to 2 s after it was"
                . " taken (the test passes on stock Laravel only when it starts in the last fifth of a second)",
        ],
    ];

    /** Why `$test` ('Class::method') is not run on Laravel `$version`, or null when it is. */
    public static function reason(string $test, string $version): ?string
    {
        return self::TESTS[$test][$version] ?? self::TESTS[$test]['*'] ?? null;
    }
}
