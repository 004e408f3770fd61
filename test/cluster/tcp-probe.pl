#!/usr/bin/perl
# One TCP exchange between two hosts of the test cluster (test/cluster/cluster.sh probe).
# perl-base is on every Debian machine, and a TCP exchange is what a cut must stop (ping is
# not installed on a fresh machine, and ICMP is not what MPI sends).
#
#   tcp-probe.pl serve ADDR SECONDS        listen on ADDR (a free port, printed on the first
#                                          line), answer one "ping" with "pong from HOSTNAME",
#                                          give up after SECONDS
#   tcp-probe.pl connect ADDR PORT SECONDS send "ping", print the answer; exit 0 if it came
#                                          within SECONDS
use strict;
use warnings;
use IO::Socket::INET;

sub hostname_of_this_host {
    open(my $f, '<', '/proc/sys/kernel/hostname') or return '?';
    my $h = <$f>;
    chomp $h;
    return $h;
}

my $mode = shift // '';
if ($mode eq 'serve' && @ARGV == 2) {
    my ($addr, $secs) = @ARGV;
    alarm $secs;    # SIGALRM's default action ends the process: never a server left behind
    my $server = IO::Socket::INET->new(LocalAddr => $addr, LocalPort => 0, Proto => 'tcp',
                                       Listen => 1, ReuseAddr => 1)
        or die "tcp-probe: cannot listen on $addr: $!\n";
    $| = 1;
    print $server->sockport, "\n";
    my $client = $server->accept or die "tcp-probe: accept: $!\n";
    my $line = <$client>;
    print $client "pong from ", hostname_of_this_host(), "\n" if defined $line && $line eq "ping\n";
    close $client;
    exit 0;
} elsif ($mode eq 'connect' && @ARGV == 3) {
    my ($addr, $port, $secs) = @ARGV;
    local $SIG{ALRM} = sub { print STDERR "tcp-probe: no answer from $addr:$port within $secs s\n"; exit 1 };
    alarm $secs;
    my $sock = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port, Proto => 'tcp',
                                     Timeout => $secs);
    unless ($sock) {
        print STDERR "tcp-probe: cannot connect to $addr:$port: $!\n";
        exit 1;
    }
    print $sock "ping\n";
    my $answer = <$sock>;
    if (defined $answer && $answer =~ /^pong from /) {
        print $answer;
        exit 0;
    }
    print STDERR "tcp-probe: no answer from $addr:$port\n";
    exit 1;
}
die "usage: tcp-probe.pl serve ADDR SECONDS | connect ADDR PORT SECONDS\n";
