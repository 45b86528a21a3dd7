<?php

namespace Illuminate\Cache\Limiters;

use Exception;

/**
 * TEST STAND-IN (tests/Laravel/Support/Shims), loaded only when the installed Laravel has no
 * Illuminate\Cache\Limiters (Laravel 12.x+): what a funnel throws when no slot frees in time.
 */
class LimiterTimeoutException extends Exception
{
}
