<?php

/**
 * TEST STAND-IN, not Laravel's class: Debian's Laravel 8.83 Support has no Illuminate\Support\Sleep,
 * which upstream Laravel 13's Lock::block() calls to wait between attempts. When the tests load
 * 13's lock classes over 8.83 (support.php, ddblock_use_laravel13()), this provides the one call
 * block() makes, with the same meaning (sleep that many microseconds). Real Laravel 13 apps have
 * the real class.
 */

declare(strict_types=1);

namespace Illuminate\Support;

class Sleep
{
    public static function usleep($duration): void
    {
        usleep((int) $duration);
    }
}
