<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

/** laravel/framework tests/Integration/Queue/UniqueJobTest.php's fixture, as upstream has it. */
class UniqueTestRetryJob extends UniqueTestFailJob
{
    public $tries = 2;

    public $connection = 'database';
}
